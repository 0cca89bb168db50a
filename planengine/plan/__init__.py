"""planengine.plan"""
