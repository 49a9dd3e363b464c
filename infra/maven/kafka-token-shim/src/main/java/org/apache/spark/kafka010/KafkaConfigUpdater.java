package org.apache.spark.kafka010;

import java.util.HashMap;
import java.util.Map;
import scala.Option;

/**
 * Tidewater shim for {@code KafkaConfigUpdater}: a small builder over the Kafka client
 * parameters that spark-sql-kafka-0-10 hands to its consumers and producers.
 */
public class KafkaConfigUpdater {
  private final String module;
  private final Map<String, Object> map;

  public KafkaConfigUpdater(String module, scala.collection.immutable.Map<String, Object> params) {
    this.module = module;
    this.map = new HashMap<>(scala.jdk.javaapi.CollectionConverters.asJava(params));
  }

  public KafkaConfigUpdater set(String key, Object value) {
    map.put(key, value);
    return this;
  }

  public KafkaConfigUpdater setIfUnset(String key, Object value) {
    map.putIfAbsent(key, value);
    return this;
  }

  /** Delegation tokens are not supported by the shim: the parameters stay as given. */
  public KafkaConfigUpdater setAuthenticationConfigIfNeeded() {
    return this;
  }

  public KafkaConfigUpdater setAuthenticationConfigIfNeeded(
      Option<KafkaTokenClusterConf> clusterConfig) {
    return this;
  }

  public Map<String, Object> build() {
    return map;
  }

  public String module() {
    return module;
  }
}
