package io.tidewater.spark.authz;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

import org.apache.hadoop.security.UserGroupInformation;
import org.apache.spark.sql.SparkSession;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Who runs a statement on the Thrift server, and with which grants.
 *
 * <p>The user: HiveServer2 runs every operation of a client session as that session's user
 * ({@code hive.server2.enable.doAs}: its {@code UserGroupInformation} is the current one, on the
 * handler thread and in the background operation alike), so the check reads
 * {@code UserGroupInformation.getCurrentUser()}. Code that runs as the server's own login user outside
 * any client operation (HiveServer2's {@code USE <database>} at session open) gets {@link #INTERNAL}:
 * {@code USE} only. The server's own sessions (its driver program's and the serving cache keeper's,
 * registered with {@link #trust}) get {@link #SERVER}: everything, including the serving cache's views.
 *
 * <p>Nothing is configured until {@link #configure}: until then every session but a trusted one is
 * refused everything (fail closed).
 */
public final class AccessControl {
    public static final AccessRules.Role SERVER = new AccessRules.Role("tidewater server", true, Set.of(), java.util.List.of(), Set.of());
    public static final AccessRules.Role INTERNAL = new AccessRules.Role("(HiveServer2 session setup)", false,
            Set.of(StatementKind.USE.name()), java.util.List.of(), Set.of());
    /** A setting HiveServer2 itself sets on every session it opens (SparkSQLSessionManager). */
    private static final String JAVA8_API = "spark.sql.datetime.java8API.enabled";
    /** Spark settings (prefixes, lower case) no client may move: reading the server's settings through
     * {@code ${...}}, file-path relations, catalog plugins, the SET command's own limits. */
    private static final Set<String> LOCKED = Set.of("spark.sql.variable.substitute", "spark.sql.runsqlonfiles",
            "spark.sql.catalog.", "spark.sql.legacy.", "spark.sql.extensions", "spark.sql.scripting.");

    private static final Set<SparkSession> TRUSTED = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
    private static volatile AccessRules rules;
    private static volatile Map<String, String> baseline = Map.of();

    private AccessControl() {
    }

    /** Loads the rules and takes the settings of a fresh session that has run a query as the baseline
     * that clients may not move (extensions set some settings when a session first plans: Delta's). */
    public static synchronized void configure(Path rulesFile, SparkSession root) throws IOException {
        AccessRules loaded = AccessRules.load(rulesFile);
        org.apache.spark.sql.classic.SparkSession fresh = (org.apache.spark.sql.classic.SparkSession) root.newSession();
        trust(fresh);
        fresh.sql("SELECT 1").queryExecution().executedPlan();
        baseline = Collections.unmodifiableMap(new HashMap<>(CollectionConverters.asJava(fresh.sessionState().conf().getAllConfs())));
        rules = loaded;
    }

    /** The server's own session: the rules do not apply to it. */
    public static void trust(SparkSession session) {
        TRUSTED.add(session);
    }

    static String rulesSource() {
        AccessRules r = rules;
        return r == null ? "not loaded" : r.source();
    }

    /** Whether a session's {@code key=value} is the server's own: set by HiveServer2 at session open, or
     * one of the JVM's system properties (HiveServer2 copies those into each session's Hive settings;
     * no session can change them, see {@code SystemPropertyGuard}). */
    static boolean serverSet(String key, String value) {
        return JAVA8_API.equalsIgnoreCase(key) || value.equals(System.getProperty(key));
    }

    /** Whether a session may differ from the baseline in {@code key} without asking: a Spark SQL setting
     * (Spark and Delta set some per session while they run, e.g. {@code spark.sql.binaryOutputStyle})
     * other than the locked ones. Keys Spark does not know are not harmless: they reach the session's
     * Hadoop configuration. */
    static boolean harmless(String key) {
        String k = key.toLowerCase(java.util.Locale.ROOT);
        return org.apache.spark.sql.internal.SQLConf$.MODULE$.containsConfigKey(key)
                && LOCKED.stream().noneMatch(k::startsWith);
    }

    static Map<String, String> baseline() {
        return baseline;
    }

    /** The grants of whoever runs the current statement in {@code session}. */
    static AccessRules.Role role(SparkSession session) {
        if (TRUSTED.contains(session)) {
            return SERVER;
        }
        AccessRules r = rules;
        if (r == null) {
            return AccessRules.Role.none("(access rules not loaded)");
        }
        try {
            UserGroupInformation current = UserGroupInformation.getCurrentUser();
            if (current.equals(UserGroupInformation.getLoginUser())) {
                return INTERNAL;
            }
            return r.roleOf(current.getShortUserName());
        } catch (IOException e) {
            return AccessRules.Role.none("(user unknown: " + e.getMessage() + ")");
        }
    }
}
