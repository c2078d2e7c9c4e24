"""capgate's registry: records, planner, policies and the gate, behind one service layer."""

__version__ = "0.1.0"
