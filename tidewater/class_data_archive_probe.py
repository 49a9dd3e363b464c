"""The driver probe of ``tidewater.class_data_archive_build``: what a Tidewater driver loads at start, run once in
a JVM that writes the classes it loaded to a CDS archive at exit.

Run: ``python -m tidewater.class_data_archive_probe <topic>`` inside an isolated stack.
"""

from __future__ import annotations

import sys
from typing import Any

from infra.spark_session import get_spark
from lakehouse import naming
from lakehouse.config import load_config
from spark_jobs.io.producer import producer


def probe(spark: Any, bootstrap: str, topic: str, checkpoint: str) -> None:
    spark.sql("CREATE TABLE IF NOT EXISTS default.cds_probe (k STRING, n BIGINT) USING delta")
    spark.sql("INSERT INTO default.cds_probe VALUES ('a', 1), ('b', 2)")
    spark.sql("MERGE INTO default.cds_probe t USING (SELECT 'a' AS k, 5L AS n) s ON t.k = s.k "
              "WHEN MATCHED THEN UPDATE SET n = s.n WHEN NOT MATCHED THEN INSERT *")
    spark.sql("SELECT k, sum(n) FROM default.cds_probe GROUP BY k ORDER BY k").collect()
    kafka = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    spark.read.format("kafka").options(**kafka).load().selectExpr("CAST(value AS STRING) AS v").collect()

    def batch(df: Any, batch_id: int) -> None:
        df.selectExpr("CAST(value AS STRING) AS k", "1L AS n").write.format("delta").mode("append") \
            .saveAsTable("default.cds_probe")

    stream = (spark.readStream.format("kafka").options(**kafka).load().writeStream.foreachBatch(batch)
              .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    stream.awaitTermination(300)


def main(argv: list[str]) -> None:
    cfg = load_config()
    prod = producer(cfg)  # kafka-python, as `tidewater produce`
    prod.send(argv[0], b'{"probe": 1}').get(timeout=60)
    prod.close()
    spark = get_spark(cfg, "tidewater-cds-probe")
    probe(spark, cfg.kafka.bootstrap, argv[0], str(naming.run_dir(cfg) / "cds-probe-checkpoint"))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
