package org.apache.spark.kafka010;

import org.apache.spark.SparkConf;
import scala.Option;

/**
 * Tidewater shim for the Scala object {@code KafkaTokenUtil} used by spark-sql-kafka-0-10.
 * Delegation tokens are not supported: no cluster ever matches and no token needs renewal.
 * Plain, SSL and SASL (JAAS in the Kafka params) authentication are unaffected.
 */
@SuppressWarnings("checkstyle:TypeName")
public final class KafkaTokenUtil$ {
  public static final KafkaTokenUtil$ MODULE$ = new KafkaTokenUtil$();

  private KafkaTokenUtil$() {}

  public Option<KafkaTokenClusterConf> findMatchingTokenClusterConfig(
      SparkConf sparkConf, String bootStrapServers) {
    return Option.empty();
  }

  public boolean needTokenUpdate(
      java.util.Map<String, Object> params, Option<KafkaTokenClusterConf> clusterConfig) {
    return false;
  }
}
