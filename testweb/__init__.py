"""A local GeoWeb of real OGC server software on 127.0.0.1, with a ground truth to measure crawls against.

``python -m testweb build|start|stop|status|capture`` from the repository root; see testweb/README.md.
"""
