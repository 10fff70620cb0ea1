"""pycsw's repository over the view ``pycsw_records`` (migration 0014) of the harvest database
GEOWEB_CATALOGUE_DB, read-only."""

from __future__ import annotations

import os

from pycsw.core.repository import Repository
from sqlalchemy import PrimaryKeyConstraint, Table, event

VIEW = "pycsw_records"


@event.listens_for(Table, "after_parent_attach")
def _identifier_is_the_key(table: Table, metadata) -> None:
    """A view has no primary key for SQLAlchemy to reflect, and its ORM maps no table without one: the
    identifier is the view's key (pycsw 2.6 reflects the table itself, with no way to say so)."""
    if table.name == VIEW and not table.primary_key.columns:
        table.append_constraint(PrimaryKeyConstraint(table.c.identifier))


class HarvestRepository(Repository):
    """The records of the discovered resources. pycsw finds ``wkb_geometry`` in ``geometry_columns`` and
    filters boxes with PostGIS on it; its full-text search runs on ``anytext_tsvector``, GeoHub's
    search document, which pycsw uses only when told (it looks for an index of a name of its own)."""

    def __init__(self, context, repo_filter=None):
        super().__init__(os.environ["GEOWEB_CATALOGUE_DB"], context, table=VIEW, repo_filter=repo_filter)
        self.fts = True
