"""A loopback server whose answers take as long as a test says: ``first_byte_delay`` seconds before the status
line and headers, ``body_delay`` more between the two halves of the body."""

from __future__ import annotations

import asyncio

from aiohttp import web

from tests.hostile.servers import PagesServer


class DelayedPagesServer(PagesServer):
    """``PagesServer`` with delays, changeable while it runs."""

    first_byte_delay = 0.0
    body_delay = 0.0

    async def _page(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(request.path_qs)
        await asyncio.sleep(self.first_byte_delay)
        if request.path not in self.pages:
            return web.Response(status=404)
        content_type, body = self.pages[request.path]
        answer = web.StreamResponse(headers={"Content-Type": content_type, "Content-Length": str(len(body))})
        await answer.prepare(request)
        half = len(body) // 2
        await answer.write(body[:half])  # the headers go with the first half
        await asyncio.sleep(self.body_delay)
        await answer.write(body[half:])
        await answer.write_eof()
        return answer
