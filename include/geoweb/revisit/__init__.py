"""Revisits: known resources re-checked on a schedule adapted to how often each one changes (``schedule``),
by their own detectors (``check``), with the change history in PostGIS (``geoweb.store.revisits``). The steps
of the revisit DAG and of ``geoweb revisit`` are in ``run``; their parameters in ``params``."""
