# SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
"""The WSGI application the servers suite runs under gunicorn and uWSGI:
GET /NAME answers the file NAME of $WSGI_ROOT whole, anything else 404."""
import os

ROOT = os.environ.get("WSGI_ROOT", "/nonexistent")


def app(environ, start_response):
    name = os.path.basename(environ.get("PATH_INFO", ""))
    try:
        with open(os.path.join(ROOT, name), "rb") as f:
            body = f.read()
    except OSError:
        start_response("404 Not Found", [("Content-Length", "0")])
        return [b""]
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Length", str(len(body)))])
    return [body]
