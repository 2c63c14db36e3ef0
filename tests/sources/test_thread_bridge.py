"""``iterate_in_thread``: a sync generator pulled on a thread, the loop never blocked."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator

import pytest

from agent_contract.sources._thread import Channel, iterate_in_thread

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


class Boom(RuntimeError):
    pass


async def test_every_item_arrives_in_order_the_last_one_included() -> None:
    closed: list[bool] = []

    def items() -> Iterator[int]:
        try:
            yield from range(5)
        finally:
            closed.append(True)

    assert [i async for i in iterate_in_thread(items)] == [0, 1, 2, 3, 4]
    assert closed == [True]


async def test_the_iterators_exception_comes_out_as_the_same_object() -> None:
    boom = Boom("x")

    def items() -> Iterator[int]:
        yield 1
        raise boom

    got: list[int] = []
    with pytest.raises(Boom) as caught:
        async for i in iterate_in_thread(items):
            got.append(i)
    assert caught.value is boom and got == [1]


async def test_each_pull_sees_the_consumers_context_as_it_is_at_that_pull() -> None:
    seen: list[tuple[str, bool]] = []

    def items() -> Iterator[int]:
        for i in range(2):
            seen.append((WHO.get(), threading.current_thread() is threading.main_thread()))
            yield i

    stream = iterate_in_thread(items)
    WHO.set("first")
    await anext(stream)
    WHO.set("second")
    await anext(stream)
    await stream.aclose()
    assert seen == [("first", False), ("second", False)]


async def test_cancelling_a_blocked_pull_interrupts_and_never_blocks_the_loop() -> None:
    release, started = threading.Event(), threading.Event()
    interrupted: list[bool] = []
    closed = threading.Event()

    def items() -> Iterator[int]:
        try:
            yield 1
            started.set()
            release.wait(10)  # a tool that does not return until released
            yield 2
            yield 3
        finally:
            closed.set()

    async def consume() -> list[int]:
        return [i async for i in iterate_in_thread(items, lambda: interrupted.append(True))]

    task = asyncio.ensure_future(consume())
    await asyncio.to_thread(started.wait, 10)
    ticks = 0
    for _ in range(5):  # the loop runs other work while the pull is blocked
        await asyncio.sleep(0)
        ticks += 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ticks == 5 and interrupted == [True]
    assert not closed.is_set()  # the pull in flight still runs on its thread...
    release.set()
    assert await asyncio.to_thread(closed.wait, 10)  # ...then the generator is closed there


async def test_stopping_early_closes_the_iterator_on_its_thread() -> None:
    where: list[bool] = []

    def items() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            where.append(threading.current_thread() is threading.main_thread())

    stream = iterate_in_thread(items)
    assert await anext(stream) == 0
    await stream.aclose()
    for _ in range(100):
        if where:
            break
        await asyncio.sleep(0.01)
    assert where == [False]


# --- items a seam emits in the middle of a pull ------------------------------------------------
async def test_an_item_emitted_mid_pull_arrives_first_and_the_pull_waits_for_the_next_ask() -> None:
    channel = Channel()
    went_on = threading.Event()

    def items() -> Iterator[str]:
        yield "before"
        channel.emit("emitted")  # a seam inside the framework's step (a model request)
        went_on.set()
        yield "after"

    stream = iterate_in_thread(items, channel=channel)
    assert await anext(stream) == "before"
    assert await anext(stream) == "emitted"
    await asyncio.sleep(0.05)
    assert not went_on.is_set()  # lock step: nothing runs ahead of the consumer
    assert [i async for i in stream] == ["after"]
    assert went_on.is_set()


async def test_an_item_emitted_on_another_thread_never_loses_the_pulls_own_item() -> None:
    channel = Channel()

    def items() -> Iterator[str]:
        helper = threading.Thread(target=channel.emit, args=("from a helper",))
        helper.start()  # the pull's own item may come while the helper's emit waits
        helper.join(0.2)
        yield "own"
        helper.join()

    got = [i async for i in iterate_in_thread(items, channel=channel)]
    assert sorted(got) == ["from a helper", "own"]


async def test_stopping_at_an_emitted_item_releases_the_pull_and_interrupts() -> None:
    channel = Channel()
    released, interrupted = threading.Event(), threading.Event()

    def items() -> Iterator[str]:
        channel.emit("emitted")
        released.set()
        yield "never read"

    stream = iterate_in_thread(items, interrupted.set, channel=channel)
    assert await anext(stream) == "emitted"
    await stream.aclose()
    assert interrupted.is_set()
    assert await asyncio.to_thread(released.wait, 5)


def test_an_emit_outside_a_pull_does_nothing() -> None:
    Channel().emit("nobody waits")  # returns at once
