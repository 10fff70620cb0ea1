"""PyWPS at /wps with the processes of wps_processes.py; its configuration file is named by PYWPS_CFG."""

import os

from mount import mounted
from pywps import Service
from wps_processes import PROCESSES

application = mounted("/wps", Service(PROCESSES, [os.environ["PYWPS_CFG"]]))
