package io.tidewater.spark.auth;

import java.util.Properties;

/**
 * The JVM's system properties, refusing changes made while HiveServer2 opens a session.
 *
 * <p>A client's session settings may hold {@code set:system:<name>=<value>}, which HiveServer2
 * applies with {@code System.setProperty} for any authenticated user. One such property,
 * {@code hive.server2.custom.authentication.class}, chooses the class that checks every later login
 * (HiveServer2 reads it anew per login), so a client could replace the password check. Installed by
 * {@link ThriftSecurity#install}: a change requested from HiveServer2's session setup fails, and
 * with it the session's open.
 */
final class SystemPropertyGuard extends Properties {
    private static final String SESSION_SETUP = "org.apache.hive.service.cli.session.HiveSessionImpl";
    private static final StackWalker WALKER = StackWalker.getInstance();

    private SystemPropertyGuard() {
    }

    static synchronized void install() {
        if (System.getProperties() instanceof SystemPropertyGuard) {
            return;
        }
        SystemPropertyGuard guard = new SystemPropertyGuard();
        guard.putAll(System.getProperties());
        System.setProperties(guard);
    }

    @Override
    public synchronized Object put(Object key, Object value) {
        if (WALKER.walk(frames -> frames.anyMatch(f -> SESSION_SETUP.equals(f.getClassName())))) {
            throw new SecurityException("tidewater: a session may not set the JVM system property " + key
                    + " (set:system: in the connection's settings)");
        }
        return super.put(key, value);
    }
}
