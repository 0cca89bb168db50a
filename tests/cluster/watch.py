"""Record every write of one resource kind in a namespace, in the API server's order, through a real watch.

Tests that judge a sequence (every upgrade step stored, at most N jobs upgrading at once, every snapshot list a
status held) read the server's history from here: a watch delivers each stored version of an object once, in
resourceVersion order, so nothing the operator wrote is missed however fast it wrote.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from typing import Any

from tests.cluster.client import ApiClient, ApiError, resource_path

WATCH_SECONDS = 300  # the server ends each watch after this; the recorder watches again from where it was


class Recorder:
    def __init__(self, client: ApiClient, group: str, plural: str, namespace: str) -> None:
        self.client = client
        self.path = resource_path(group, plural, namespace)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"watch {self.path}", daemon=True)

    def start(self) -> Recorder:
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError(f"the watch on {self.path} did not start: {self.errors}")
        return self

    def stop(self) -> None:
        """The thread ends at the watch's next event or its server-side timeout (``WATCH_SECONDS``); nothing
        is recorded after this call."""
        self._stop.set()

    def objects(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every stored version (ADDED/MODIFIED/DELETED) of the objects, or of one of them, oldest first."""
        return [obj for _, obj in list(self.events) if name is None or obj["metadata"]["name"] == name]

    def _main(self) -> None:
        version = ""
        while not self._stop.is_set():
            if not version:  # start from now: a list's resourceVersion (nothing exists yet in a new namespace)
                try:
                    listed = self.client.request("GET", self.path)
                except (ApiError, OSError) as error:  # 429 while a new CRD's storage initializes
                    self.errors.append(f"{type(error).__name__}: {error}")
                    self._stop.wait(0.5)
                    continue
                version = listed["metadata"]["resourceVersion"]
                for item in listed.get("items") or []:
                    self.events.append(("ADDED", item))
            query = f"?watch=1&resourceVersion={version}&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}"
            headers = {"Accept": "application/json"}
            request = urllib.request.Request(self.client.url + self.path + query, headers=headers)
            try:
                with urllib.request.urlopen(request, context=self.client._context,
                                            timeout=WATCH_SECONDS + 30) as response:
                    self._started.set()
                    for line in response:
                        if self._stop.is_set():
                            return
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        if event.get("type") == "ERROR":  # 410 Gone: list again from now
                            version = ""
                            break
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        if event.get("type") != "BOOKMARK":
                            self.events.append((str(event.get("type")), obj))
            except (OSError, ValueError, urllib.error.URLError) as error:
                if self._stop.is_set():
                    return
                self.errors.append(f"{type(error).__name__}: {error}")
                self._stop.wait(0.5)
