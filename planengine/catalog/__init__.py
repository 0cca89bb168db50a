"""Catalogs: where tables, views and functions are defined and looked up.

``objects`` holds the data classes; ``base.Catalog`` the interface; ``memory`` and ``file_catalog`` the
two backends; ``manager.CatalogManager`` the current catalog/database, temporary objects and name
resolution that the SQL front end and the planner talk to. See docs/catalogs.md.
"""
