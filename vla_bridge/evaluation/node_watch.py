"""Which nodes the run can count on: the policy node seen on the graph (DDS) and, under the
package's launcher, the node processes themselves (vla_bridge.ros.node_events).

DDS alone tells "in the graph" from "not in the graph", and forgets a node only a lease after
its last sign of life (10 s with config/fastdds_profile.xml). The launcher's events add what
DDS cannot know:

* ``died``: a node died for good: the run stops, naming the node and its exit code or signal;
* ``restarted``: the policy node died and runs again: the episode in flight fails, the next
  one waits for the new node. Until their lease runs out the dead node's endpoints are still
  counted: they are told apart by their ids (ids seen before the restart line was read; the
  launcher writes it before the new process starts, so the new node's ids cannot be among them);
* a policy node that left the graph while its process lives is *stalled* (stopped, frozen),
  not gone.

Pure: the run's Graph and a NodeEvents (or None: ros2 launch, separate terminals).
"""
from __future__ import annotations

from vla_bridge import contract as C
from vla_bridge.ros.node_events import DIED, RESTARTED, NodeEvents

POLICY_NODE = "policy_node"  # launch_args.POLICY's name


class NodeWatch:
    """The run's view of its nodes: ``news()`` from the launcher, ``policies()`` on the graph
    (the dead ones left out), and why the policy is missing (``policy_missing``)."""

    def __init__(self, graph, events: NodeEvents | None = None):
        self.graph = graph
        self.events = events
        self.seen: set = set()  # ids of the chunk publishers at the last count
        self.stale: set = set()  # ids of dead policy nodes still in DDS' graph
        self.restarting = False  # a restart was read; the new node has not been seen yet

    def news(self) -> tuple[str | None, str | None]:
        """(a final death, a restart) read from the launcher's events since the last call,
        each as the reason to record (None: none)."""
        died = restarted = None
        for event in self.events.poll() if self.events else ():
            if event["event"] == DIED:
                died = died or f"node {event['node']} died with {event['how']}"
            elif event["event"] == RESTARTED:
                self.stale |= self.seen
                self.restarting = True
                restarted = (f"{event['node'].replace('_', ' ')} restarted: it died with "
                             f"{event['how']} (restart {event['restart']} of {event['of']})")
        return died, restarted

    def policies(self) -> int:
        """Policy nodes on the graph (chunk publishers), dead ones still in DDS left out."""
        ids_of = getattr(self.graph, "publisher_ids", None)
        if ids_of is None:  # a graph that cannot tell endpoints apart
            return self.graph.count_publishers(C.TOPIC_ACTION_CHUNK)
        self.seen = set(ids_of(C.TOPIC_ACTION_CHUNK))
        self.stale &= self.seen  # forget the ones whose lease ran out
        return len(self.seen - self.stale)

    def policy_missing(self) -> str:
        """Why no policy node is on the graph: stalled (its process lives) or gone."""
        state = self.events.process_state(POLICY_NODE) if self.events else None
        if state is None:
            return "the policy node is gone (nobody publishes action chunks)"
        how = ", stopped (SIGSTOP, Ctrl-Z or a debugger)," if state == "stopped" else ""
        return (f"the policy node stalled: its process (pid {self.events.pids[POLICY_NODE]}) "
                f"is alive{how} but left the graph, silent on DDS for a whole lease (10 s "
                "with the shipped profile)")
