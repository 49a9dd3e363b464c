"""The alerts lane: the patterns of a pipeline's ``alerts:`` section over its valid events, to ``alerts.<p>``
and the topic ``<topic>.alerts`` (``spark_jobs.alerts.query``)."""
