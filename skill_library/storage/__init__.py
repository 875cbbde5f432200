"""The parts of the SQL record store (``skill_library.record_store``), one concept each.

``tables`` (the schema), ``interface`` (the :class:`RecordStore` the library uses) and
``rows`` (version rows read as skills).
"""
