"""A private event loop in a daemon thread, so synchronous code (a pt.Transformer) can run async LLM work.

Why a loop of our own instead of ``asyncio.run`` per call: the openai client, its connection pool and our
semaphores are bound to one loop, and must outlive a single call. Running everything on one background loop also
makes the sync helpers work the same from a plain thread and from inside a running loop (Jupyter): the caller's
thread just waits for the result. Calling a sync helper from a coroutine that itself runs on this loop would
deadlock, so that raises instead.

Code run on a loop may raise SystemExit or KeyboardInterrupt (a plug-in's ``score()``): asyncio sets it on the task
AND re-raises it out of the loop, which used to end the loop's thread with the caller waiting forever for a result
(a hang at 0% CPU). Here the loop goes on (:func:`_run_on`), so the task's awaiters see the exception; whatever still
reaches the caller is a StageError naming the line (superb.faults), never a hang and never an exit with status 0. A
Ctrl-C in the waiting thread is a Ctrl-C: the work is cancelled and the KeyboardInterrupt goes on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Awaitable, Coroutine, Iterable, TypeVar

from superb.faults import fault, is_fault
from superb.terminal import progress_on

T = TypeVar("T")
log = logging.getLogger(__name__)


class LoopThread:
    def __init__(self, name: str = "superb-llm") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    ready.set()
                    _run_on(loop, loop.run_forever, lambda: False)

                self._thread = threading.Thread(target=main, name=self._name, daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None and not self._loop.is_closed()

    def in_loop(self) -> bool:
        """True when the calling code runs on this loop's thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one coroutine to completion on the private loop and return its result (or raise its exception)."""
        if self.in_loop():
            coro.close()
            raise RuntimeError(
                "a synchronous LLM helper (run/gather_sync/complete_many) was called from a coroutine running on the "
                "client's own loop; await the coroutine instead"
            )
        future = self.submit(coro)
        try:
            while True:  # wait in slices so a pending Ctrl-C is raised here promptly, whatever delivered it
                try:
                    return future.result(timeout=0.25)
                except FutureTimeout:
                    if future.done():  # the coroutine's own TimeoutError, not the wait's
                        raise
        except BaseException as exc:  # Ctrl-C (KeyboardInterrupt) in the waiting thread: stop the work, not the wait
            future.cancel()
            if isinstance(exc, Exception) or not is_fault(exc):
                raise
            raise fault("code run on the LLM client's loop", exc) from exc  # SystemExit the work raised

    async def delegate(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` on the private loop from any other running loop."""
        if self.in_loop():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def close(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or loop.is_closed():
            return
        if loop.is_running() and thread is not threading.current_thread():
            # work still pending (a Ctrl-C cancelled the wait while thousands of calls were queued): let the
            # cancellations finish before the loop stops, so nothing is destroyed while pending (asyncio's noise)
            try:
                asyncio.run_coroutine_threadsafe(_cancel_pending(), loop).result(timeout=5)
            except Exception as exc:  # noqa: BLE001 - closing must not fail; the loop is stopped below either way
                log.warning("closing the LLM client: pending calls not cancelled cleanly (%s: %s); the loop is "
                            "stopped anyway", type(exc).__name__, exc)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        if not loop.is_running():
            loop.close()


async def _cancel_pending() -> None:
    """Cancel every other task of the running loop and wait until they have finished."""
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def gather_cancelling(coros: Iterable[Awaitable[T]]) -> list[T]:
    """Like asyncio.gather, but the first exception cancels the remaining work before it propagates."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


PROGRESS_MIN = 2  # a progress bar from this many items (unless SUPERB_PROGRESS=0)


def progress_bar(total: int, desc: str, *, unit: str = "query", show: bool = True):
    """A tqdm bar on stderr with ETA; off below PROGRESS_MIN items, when ``show`` is False or SUPERB_PROGRESS=0.
    Shown whether or not stderr is a terminal, so long runs logged to a file show their ETA too."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not progress_on() or not show or total < PROGRESS_MIN)


def run_all(llm: Any, coros: list, *, bar: Any = None) -> list:
    """THE way synchronous code (a reranker, a judge) runs its per-query coroutines: concurrently, on the client's
    own loop (``llm.gather_sync``) when it has one, else on a private loop in this thread (:func:`run_here`); results
    in order, the first exception cancels the rest. ``bar`` (e.g. :func:`progress_bar`) advances once per completed
    coroutine (a failed one does not advance it) and is closed at the end, also on failure."""
    if bar is not None:
        coros = [_advancing(c, bar) for c in coros]
    try:
        if llm is not None and hasattr(llm, "gather_sync"):
            return llm.gather_sync(coros)
        return run_here(gather_cancelling(coros))
    finally:
        if bar is not None:
            bar.close()


def run_here(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, except that SystemExit or a KeyboardInterrupt raised by a task (not a Ctrl-C) reaches
    the task's awaiters instead of ending the loop (module docstring); one that reaches here is a StageError."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    main = loop.create_task(coro)
    try:
        _run_on(loop, lambda: loop.run_until_complete(main), main.done)
        return main.result()
    except BaseException as exc:
        if isinstance(exc, Exception) or not is_fault(exc):
            raise
        raise fault("code run by a reranker", exc) from exc
    finally:
        try:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in tasks:
                t.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _run_on(loop: asyncio.AbstractEventLoop, run: Any, finished: Any) -> None:
    """``run()`` (the loop's run_forever or run_until_complete) again each time a task's SystemExit or
    KeyboardInterrupt escapes it (asyncio re-raises them after setting them on the task, whose awaiters then see them),
    until it returns or ``finished()``; a Ctrl-C goes on."""
    while True:
        try:
            run()
            return
        except BaseException as exc:  # noqa: BLE001 - see the docstring
            if isinstance(exc, Exception) or not is_fault(exc) or loop.is_closed():
                raise
            log.debug("a task raised %s on the loop; its awaiters see it", type(exc).__name__)
            if finished():
                return


async def _advancing(coro: Awaitable[T], bar: Any) -> T:
    result = await coro
    bar.update(1)
    return result
