"""The use cases the DAGs and the ``geoweb`` command run over the store: the crawl run (``crawl``), catalogue
and archive harvests (``catalogue``, ``archive``), revisits (``revisit``) and a run's export to files
(``export``); the parameters of every DAG's runs are ``params``.

Kept free of imports here: the DAG files import ``geoweb.harvest.params`` when they are parsed, and that must
not pull in the crawler or the database driver.
"""
