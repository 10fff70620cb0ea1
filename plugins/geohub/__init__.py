"""GeoHub: the FastAPI app of the GeoHub plugin (``app``), Airflow's authentication of its users
(``access``) and the harvest database it searches (``harvest_db``)."""
