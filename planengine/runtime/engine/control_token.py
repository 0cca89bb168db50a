"""The driver's control token: the secret ``POST /v1/stop`` and ``POST /v1/start`` must carry.

Contract (docs/operator.md, "Driver API"): the launcher writes the token into a file only it and the driver
can read and names it with ``planengine run --control-token-file PATH`` or the environment variable
``PLANENGINE_CONTROL_TOKEN_FILE`` (the flag wins). On Kubernetes the file is a key of the job's
``<job>-control-token`` Secret mounted into the driver and standby pods; the local launcher writes a 0600
file in the job's operator directory. The token itself never appears on a command line, in an environment
variable, a log or a status document, where other users of the machine or the cluster could read it.
"""

from __future__ import annotations

import os
from pathlib import Path

from planengine.errors import UserError

TOKEN_FILE_ENV = "PLANENGINE_CONTROL_TOKEN_FILE"
MIN_TOKEN_CHARS = 16


def control_token(path: str | None = None) -> str | None:
    """The token in ``path`` (else in the file ``PLANENGINE_CONTROL_TOKEN_FILE`` names); None when neither is
    given (a loopback-only driver, e.g. a developer's ``planengine run``)."""
    path = path or os.environ.get(TOKEN_FILE_ENV) or None
    if path is None:
        return None
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read the control token file {path}: {error}",
                        hint="give --control-token-file (or PLANENGINE_CONTROL_TOKEN_FILE) a readable file holding "
                             "the job's token") from None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise UserError(f"the control token in {path} must be at least {MIN_TOKEN_CHARS} characters without "
                        "whitespace", hint="write a random token, e.g. python -c 'import secrets; "
                                           "print(secrets.token_urlsafe(32))'")
    return token
