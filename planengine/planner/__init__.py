"""planengine.planner"""
