"""MapProxy (WMS at /service, WMTS at /service and /wmts, TMS at /tms) configured by MAPPROXY_CONFIG."""

import os

from mapproxy.wsgiapp import make_wsgi_app

application = make_wsgi_app(os.environ["MAPPROXY_CONFIG"])
