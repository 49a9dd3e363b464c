package org.apache.spark.kafka010;

/**
 * Tidewater shim. Stands for a Kafka delegation-token cluster configuration.
 * Tidewater never configures delegation tokens, so no instance is ever created.
 */
public final class KafkaTokenClusterConf implements java.io.Serializable {
  private KafkaTokenClusterConf() {}
}
