"""The dashboard's JSON answers, encoded like every other JSON stepscope writes.

Starlette's ``JSONResponse`` uses the standard library, which writes NaN as ``NaN`` (not
JSON: the page's parser rejects it) and cannot write numpy numbers; this one goes through
``stepscope.jsonform`` (NaN and infinities as null, numpy numbers as numbers), the same
encoder as the CLI's ``--format json`` and the analysis cache's files.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from stepscope import jsonform


class JsonResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return jsonform.encode(content)
