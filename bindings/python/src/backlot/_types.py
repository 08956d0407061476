"""The values the manager returns: asset packs, their status, status updates."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Union

from ._errors import Error, Status, error_for

__all__ = ["AssetPack", "FetchReport", "PackStatus", "StatusUpdate", "UpdateKind"]


class PackStatus(enum.IntFlag):
    """Apple's AssetPack.Status bits (BACKLOT_PACK_*): an option set."""

    DOWNLOAD_AVAILABLE = 1 << 0
    UPDATE_AVAILABLE = 1 << 1
    UP_TO_DATE = 1 << 2
    OUT_OF_DATE = 1 << 3
    OBSOLETE = 1 << 4
    DOWNLOADING = 1 << 5
    DOWNLOADED = 1 << 6


class UpdateKind(enum.IntEnum):
    """What a status update says (BACKLOT_UPDATE_*), Apple's DownloadStatusUpdate cases."""

    BEGAN = 1
    DOWNLOADING = 2  # sent again each time completed_bytes changes
    PAUSED = 3  # queued behind another process of the container
    FINISHED = 4
    FAILED = 5


@dataclass(frozen=True)
class AssetPack:
    """A pack the catalog offers this device (Apple's AssetPack), with its status."""

    id: str
    version: int
    download_size: int
    status: PackStatus


@dataclass(frozen=True)
class FetchReport:
    """What a manager's last download of a pack did (backlot_last_fetch): its bytes and chunks
    from the origin and from LAN peer caches (docs/peer-cache.md), chunks reused, files linked."""

    version: int
    origin_bytes: int
    peer_bytes: int
    origin_chunks: int
    peer_chunks: int
    reused_chunks: int
    linked_files: int


@dataclass(frozen=True)
class StatusUpdate:
    """One of a subscription's updates (Apple's statusUpdates).

    ``kind`` is an :class:`UpdateKind` (an ``int`` for a kind this version does not know);
    ``completed_bytes`` and ``total_bytes`` are set for DOWNLOADING and FINISHED; for FAILED,
    ``error_status`` and ``error_message`` say why (:attr:`error` as an exception).
    """

    kind: Union[UpdateKind, int]
    pack_id: str
    completed_bytes: int = 0
    total_bytes: int = 0
    error_status: Union[Status, int] = Status.OK
    error_message: str = ""

    @property
    def error(self) -> Optional[Error]:
        """The failure of a FAILED update as a :class:`backlot.Error`, else None."""
        if self.error_status == Status.OK:
            return None
        return error_for(int(self.error_status), self.error_message)
