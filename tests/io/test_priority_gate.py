"""PriorityGate: capacity, ordering, oversized requests and cancellation (property tests)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.io import PriorityGate, run_sync

requests = st.lists(
    st.tuples(st.integers(0, 5), st.integers(1, 12), st.booleans()),  # priority, amount, cancel it?
    min_size=1, max_size=25,
)


@settings(max_examples=100, deadline=None)
@given(reqs=requests, capacity=st.integers(1, 10))
def test_gate_invariants(reqs, capacity):
    async def scenario():
        gate = PriorityGate(capacity)
        holders: list[int] = []
        granted: list[int] = []
        events: list[asyncio.Event] = [asyncio.Event() for _ in reqs]

        def check():  # at quiescent points: every grant has resumed its task
            assert gate.in_use == sum(reqs[i][1] for i in holders)
            if gate.in_use > capacity:  # only a lone oversized request may exceed the capacity
                assert len(holders) == 1 and reqs[holders[0]][1] > capacity

        async def user(i: int):
            prio, amount, _ = reqs[i]
            await gate.acquire((prio, 0), amount)
            holders.append(i)
            granted.append(i)
            await events[i].wait()
            holders.remove(i)
            gate.release(amount)

        # block the gate, queue everybody, then cancel some and let the rest through one by one
        await gate.acquire((-1, 0), capacity)
        tasks = [asyncio.ensure_future(user(i)) for i in range(len(reqs))]
        for _ in range(3):
            await asyncio.sleep(0)
        assert granted == []
        for i, (_p, _a, cancel) in enumerate(reqs):
            if cancel:
                tasks[i].cancel()
        gate.release(capacity)
        expected = sorted((p, i) for i, (p, a, c) in enumerate(reqs) if not c)
        while not all(t.done() for t in tasks):
            for _ in range(3):
                await asyncio.sleep(0)
            check()
            for i in list(holders):  # finish the current holders; the next ones get in
                events[i].set()
        # everything admitted in (priority, arrival) order, nothing left behind
        assert granted == [i for _p, i in expected]
        assert gate.available == capacity and gate.waiting == 0

    run_sync(scenario())


def test_oversized_waits_for_empty_gate():
    async def scenario():
        gate = PriorityGate(4)
        await gate.acquire((0, 0), 1)
        big = asyncio.ensure_future(gate.acquire((0, 0), 10))
        await asyncio.sleep(0)
        assert not big.done()
        gate.release(1)
        await big
        assert gate.in_use == 10
        small = asyncio.ensure_future(gate.acquire((0, 0), 1))
        await asyncio.sleep(0)
        assert not small.done()
        gate.release(10)
        await small
        gate.release(1)
        assert gate.available == 4

    run_sync(scenario())
