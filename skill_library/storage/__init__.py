"""The storage layer: the SQL record store and every table and row the library writes, one
concept each (no SQL outside this package, ``docs/architecture.md``).

The record store: ``sql_store`` (:class:`SQLRecordStore`; ``skill_library.record_store``
re-exports it), ``tables`` (the schema), ``interface`` (the :class:`RecordStore` the
library uses), ``rows`` (version rows read as skills), ``dialects`` (SQLite and PostgreSQL
specifics: connection setup, error mapping, retries), ``integrity`` (is this a sound
records database), ``transactions`` (one connection, one transaction), ``bulk`` (many new
versions in a few statements) and ``copying`` (every row into an empty store).

The rows of the concepts, each with its tables: ``audit``, ``actor_rows``,
``policy_rows``, ``canary_rows`` and ``skill_rows`` (governance; ``governance_tables``),
``patterns`` and ``procedures`` (``pattern_tables``), ``privacy_rows`` (the erasure salt;
``privacy_tables``), ``feature_tables`` (uplift, tool bindings), ``erasure_rows`` and
``chroma_file`` (forget), ``redaction_rows``, ``uplift_rows``, ``governance_rows`` (tool
specs, approvals, evaluations), ``tool_binding_rows`` (tool-schema re-verification).
``migrations`` (the schema steps) and ``advisory_lock`` (PostgreSQL's write lock) are
storage primitives too.
"""
