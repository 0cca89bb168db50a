"""planengine.exec"""
