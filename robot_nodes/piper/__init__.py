"""PiPER arms: ``arm`` (the driver over ``piper_sdk``), ``fake_piper`` (a CAN-level firmware
emulator on python-can's virtual bus), ``safety`` (the filter in front of every command),
``piper_node`` (the ROS shell), ``teleop`` and ``fake_leader`` (leader/follower
teleoperation: reading the leader arms' commands; a leader arm emulator).
"""
