package io.tidewater.spark.auth;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;

import io.tidewater.spark.authz.AccessControl;
import org.apache.spark.sql.SparkSession;

/**
 * What the Thrift server's driver program ({@code spark_jobs/serving/thrift_service.py}) sets up before
 * HiveServer2 starts: the password check ({@link PasswordFileAuthenticator}, named in the system
 * property HiveServer2 reads per login), the guard on system properties, and the access rules
 * ({@link AccessControl}); the server's own sessions are then trusted one by one ({@link #trust}).
 */
public final class ThriftSecurity {
    public static final String PROVIDER_PROPERTY = "hive.server2.custom.authentication.class";

    private ThriftSecurity() {
    }

    public static void install(String credentials, String rules, SparkSession root) throws IOException {
        PasswordFileAuthenticator.configure(Paths.get(credentials));
        System.setProperty(PROVIDER_PROPERTY, PasswordFileAuthenticator.class.getName());
        SystemPropertyGuard.install();
        AccessControl.configure(Path.of(rules), root);
        AccessControl.trust(root);
    }

    public static void trust(SparkSession session) {
        AccessControl.trust(session);
    }
}
