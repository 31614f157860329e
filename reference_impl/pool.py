"""Memory pools (``llm.MemPoolConfig`` / ``llm.HostMemPoolConfig``): first-fit page allocation in one segment."""

from __future__ import annotations

import bisect
import json
import threading
from dataclasses import dataclass

from .checks import UINT32_MAX
from .memory import MemorySpace, Segment
from .status import LLMException, LLMStatusCode

DEFAULT_PAGE_SHIFT = 16


@dataclass(frozen=True, slots=True)
class PoolConfig:
    memory_size: int
    page_shift: int = DEFAULT_PAGE_SHIFT


def parse_pool_config(option: str, text: str) -> PoolConfig:
    """Parse ``{"memory_size": N, "page_shift": 16}``; any fault is LLMException(LLM_PARAM_INVALID)."""

    def bad(why: str) -> LLMException:
        return LLMException(f"{option} is invalid: {why}", status_code=LLMStatusCode.LLM_PARAM_INVALID)

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise bad("not a JSON object")
    size = data.get("memory_size")
    shift = data.get("page_shift", DEFAULT_PAGE_SHIFT)
    for name, value in (("memory_size", size), ("page_shift", shift)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(f"{name} must be an unsigned integer, got {value!r}")
    assert isinstance(size, int) and isinstance(shift, int)
    if size == 0:
        raise bad("memory_size must be > 0")
    if not 10 <= shift < 31:
        raise bad(f"page_shift must be in [10, 31), got {shift}")
    if (size >> shift) >= UINT32_MAX:
        raise bad("memory_size >> page_shift must be < UINT32_MAX")
    return PoolConfig(size, shift)


class MemoryPool:
    """Pages of one segment handed out first-fit; freed runs are merged back into the free list."""

    def __init__(self, space: MemorySpace, config: PoolConfig) -> None:
        self.config = config
        self.page = 1 << config.page_shift
        self.num_pages = -(-config.memory_size // self.page)
        self.segment: Segment = space.allocate_segment(self.num_pages * self.page)
        self._lock = threading.Lock()
        self._free_starts: list[int] = [0]  # sorted start pages of free runs
        self._free_len: dict[int, int] = {0: self.num_pages}
        self._used: dict[int, int] = {}  # start page -> pages
        #: the end of the highest allocation ever made (bytes from the segment's base): what has been written at most
        self.high_water = 0

    @property
    def free_bytes(self) -> int:
        with self._lock:
            return sum(self._free_len.values()) * self.page

    def allocate(self, nbytes: int) -> int:
        """Address of ``nbytes`` rounded up to whole pages; LLMException(LLM_OUT_OF_MEMORY) if none fits."""
        pages = max(1, -(-nbytes // self.page))
        with self._lock:
            for start in self._free_starts:
                run = self._free_len[start]
                if run >= pages:
                    self._take(start, run, pages)
                    self._used[start] = pages
                    self.high_water = max(self.high_water, (start + pages) * self.page)
                    return self.segment.base + start * self.page
        raise LLMException(f"memory pool exhausted: {nbytes} bytes requested",
                           status_code=LLMStatusCode.LLM_OUT_OF_MEMORY)

    def _take(self, start: int, run: int, pages: int) -> None:
        del self._free_len[start]
        i = bisect.bisect_left(self._free_starts, start)
        if run == pages:
            del self._free_starts[i]
        else:
            self._free_starts[i] = start + pages
            self._free_len[start + pages] = run - pages

    def free(self, addr: int) -> None:
        start = (addr - self.segment.base) // self.page
        with self._lock:
            pages = self._used.pop(start, None)
            if pages is None:
                raise ValueError(f"{addr:#x} is not an allocation of this pool")
            i = bisect.bisect_left(self._free_starts, start)
            # merge with the following run
            if i < len(self._free_starts) and self._free_starts[i] == start + pages:
                pages += self._free_len.pop(self._free_starts[i])
                del self._free_starts[i]
            # merge with the preceding run
            if i > 0:
                prev = self._free_starts[i - 1]
                if prev + self._free_len[prev] == start:
                    self._free_len[prev] += pages
                    return
            self._free_starts.insert(i, start)
            self._free_len[start] = pages
