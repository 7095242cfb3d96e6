"""What a run leaves behind as data, and what is made from it.

* ``bags``: one rosbag2 bag (MCAP) per episode; ``recorder_node``: the node that writes them
  (record:=true);
* ``lerobot_export``: bags -> LeRobot v3 datasets; ``demos``: RoboFollow's training set from
  oracle episodes; ``libero_demos``: LIBERO's, from LIBERO oracle episodes that
  ``libero_episodes`` runs in .venv-libero; ``train``: the built-in tiny policy trained on
  such a dataset;
* ``teleop`` / ``demo_node``: teleoperated demonstrations (`vla-bridge record-demos`): the
  operator console and its node, recording through ``recorder_node``;
* ``viewer_node`` / ``foxglove_channels``: the live Foxglove viewer (viewer:=foxglove).

May import the engine (``evaluation`` and everything below it); never ``vqa``,
``reporting`` or the tools.
"""
