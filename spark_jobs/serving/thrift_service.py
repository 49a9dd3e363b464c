"""The Thrift server's driver program: HiveServer2 on this Spark session, then the serving cache.

``infra.services.thrift_server`` runs this file with ``spark-submit`` (the same settings, class path
and password file as before; the ``hive.server2.*`` settings arrive as ``spark.hadoop.*``), so the
server and the cache keeper (``spark_jobs.serving.cache``) share one JVM and its global temporary views. The
keeper runs in the main thread: if it fails, the program ends and the JVM with it (``spark-submit``
exits with the program), so the server never outlives the keeper of its cache.

Before HiveServer2 starts, the program installs the server's security (``io.tidewater.spark.auth.
ThriftSecurity``): the password check against ``--credentials`` (salted hashes) and the access rules of
``--access`` (``infra/thrift_access.json``); its own sessions, this one and the keeper's, are trusted:
the rules are for clients.

Usage: thrift_service.py --state FILE --every SECONDS --credentials FILE --access FILE VIEW...
(SECONDS 0: no cache)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

from spark_jobs.serving.cache import ServingCache
from spark_jobs.shared.background import BACKGROUND_POOL

EXIT_KEEPER_FAILED = 70  # EX_SOFTWARE


def log(message: str) -> None:
    print(f"{time.strftime('%y/%m/%d %H:%M:%S', time.gmtime())} thrift_service: {message}", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="thrift_service")
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--every", type=float, required=True)
    parser.add_argument("--credentials", type=Path, required=True)
    parser.add_argument("--access", type=Path, required=True)
    parser.add_argument("views", nargs="*")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.enableHiveSupport().getOrCreate()
    jvm = spark._jvm
    assert jvm is not None
    security = jvm.io.tidewater.spark.auth.ThriftSecurity
    security.install(str(args.credentials), str(args.access), spark._jsparkSession)
    jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2.startWithContext(spark._jsparkSession.sqlContext())
    cache = f"rebuilt at most every {args.every} s for {args.views}" if args.every else "off"
    log(f"HiveServer2 started; serving cache {cache}")
    if not args.every or not args.views:
        while True:
            time.sleep(3600)

    session = spark.newSession()
    security.trust(session._jsparkSession)  # the serving cache's views are changed through this session only
    session.conf.set("spark.sql.shuffle.partitions", "1")  # the views' rows are few
    session.conf.set("spark.databricks.delta.stalenessLimit", "0")  # rebuilds read the newest commits
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", BACKGROUND_POOL)  # queries' tasks go first
    keeper = ServingCache(session, args.views, args.state, args.every, log)
    try:
        keeper.run()
    except BaseException:  # the keeper cannot keep its promise: end the server, no stale answers
        log("serving cache keeper failed; stopping the server:\n" + traceback.format_exc())
        sys.stdout.flush()
        os._exit(EXIT_KEEPER_FAILED)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
