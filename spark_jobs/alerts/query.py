"""The alerts query of a pipeline with an ``alerts:`` section: one more streaming query in its speed job's
application (``speed.queries`` starts it beside the pipeline's other queries; a Kappa replay, which
rebuilds a speed version, does not run it).

Kafka -> parse -> valid events -> watermark and dedup (as the speed layer) -> ``alerts.processor``
-> ``alerts.sink.AlertSink`` (``alerts.<p>``, then ``<topic>.alerts``). Its checkpoint is one lineage
of its own (``naming.alerts_checkpoint``), since its state cannot be taken over by another query: a new
one (first start, or a checkpoint deleted) starts from ``kafka.starting_offsets`` (the earliest by
default), and every alert it recomputes has the ``alert_id`` already stored, which the sink's MERGE skips.
"""

from __future__ import annotations

from typing import Any

from lakehouse import contracts, naming
from lakehouse.config import TidewaterConfig
from lakehouse.pipeline import Pipeline
from spark_jobs.alerts.processor import pattern_alerts
from spark_jobs.alerts.sink import AlertSink
from spark_jobs.alerts.topic import ensure_alerts_topic
from spark_jobs.io.kafka_source import read_stream
from spark_jobs.io.sink import MicroBatchSink
from spark_jobs.transforms.parse import classify, valid_events, with_kafka_metadata
from spark_jobs.transforms.windows import with_watermark_dedup

QUERY = "alerts"


def start_alerts(spark: Any, cfg: TidewaterConfig, p: Pipeline, trigger: dict[str, str]) -> Any:
    contracts.ensure(spark, contracts.alerts(p))
    ensure_alerts_topic(cfg, naming.alerts_topic(p.topic))
    events = read_stream(spark, cfg, p.topic).transform(with_kafka_metadata).transform(classify(p))
    alerts = valid_events(events).transform(with_watermark_dedup(p)).transform(pattern_alerts(p))
    checkpoint = naming.alerts_checkpoint(cfg, p.name)
    sink: MicroBatchSink = AlertSink(spark, cfg, p, checkpoint)
    return (alerts.writeStream.queryName(f"{p.name}_{QUERY}").outputMode("append").foreachBatch(sink)
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())
