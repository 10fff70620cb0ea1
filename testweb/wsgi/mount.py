"""Serves a WSGI application at one path only; everything else (robots.txt included) is a plain 404."""


def mounted(path, app):
    def dispatch(environ, start_response):
        if environ.get("PATH_INFO", "").rstrip("/") == path:
            return app(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"Not found\n"]

    return dispatch
