"""The planner's version, apart from the planner: stored recomputations are keyed by it, and
reading one back must not import the model that would recompute it."""

PLANNER_VERSION = "capgate-planner 0.4.5"
