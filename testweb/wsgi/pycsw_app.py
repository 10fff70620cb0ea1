"""pycsw at /csw; its configuration file is named by PYCSW_CONFIG (pycsw's own variable)."""

from mount import mounted
from pycsw.wsgi import application as pycsw_application

application = mounted("/csw", pycsw_application)
