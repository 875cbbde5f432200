"""The parts of the SQL record store (``skill_library.record_store``), one concept each.

``tables`` (the schema), ``interface`` (the :class:`RecordStore` the library uses),
``rows`` (version rows read as skills), ``dialects`` (SQLite and PostgreSQL specifics:
connection setup, error mapping, retries), ``integrity`` (is this a sound records
database), ``transactions`` (one connection, one transaction) and ``bulk`` (many new
versions in a few statements).
"""
