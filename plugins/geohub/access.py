"""Who may use GeoHub: the user logged in to Airflow (the UI's ``_token`` cookie, or a bearer token from
POST /auth/token), allowed by the auth manager to see the custom view GeoHub.

Airflow's API modules are imported on the first request, not with the plugin: every Airflow process loads
plugins, and only the API server needs them.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

VIEW = "GeoHub"  # the custom view's name in the auth manager's permissions

bearer = HTTPBearer(auto_error=False, description="A token from Airflow's POST /auth/token")


async def geohub_user(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Any:
    """The Airflow user of the request: 401 without a valid token, 403 when not allowed to see GeoHub."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.core_api.security import get_user

    user = await get_user(request, None, credentials)
    if not get_auth_manager().is_authorized_custom_view(method="GET", resource_name=VIEW, user=user):
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"not allowed to use {VIEW}")
    return user


User = Annotated[object, Depends(geohub_user)]  # a route's login: every GeoHub route but the public catalogue


def login_url(next_path: str) -> str:
    """Airflow's login page, coming back to ``next_path`` afterwards."""
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager().get_url_login(next_url=next_path)
