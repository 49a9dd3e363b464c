package io.tidewater.spark.authz;

import java.util.Map;

import org.apache.spark.SparkThrowable;

/**
 * A statement refused by the Thrift server's access control ({@link AccessCheck}, {@link AccessParser}):
 * names the role, the privilege and the object. SQLSTATE 42501 (insufficient privilege); HiveServer2
 * sends it to the client as {@code Error running query: [TIDEWATER_ACCESS_DENIED] ...}.
 */
public final class AccessDeniedException extends RuntimeException implements SparkThrowable {
    public static final String CONDITION = "TIDEWATER_ACCESS_DENIED";
    public static final String SQL_STATE = "42501";

    public AccessDeniedException(String role, String privilege, String object) {
        super("tidewater: access denied: role '" + role + "' may not " + privilege + " on " + object
                + " (rules: " + AccessControl.rulesSource() + ")");
    }

    @Override
    public String getCondition() {
        return CONDITION;
    }

    @Override
    public String getSqlState() {
        return SQL_STATE;
    }

    @Override
    public boolean isInternalError() {
        return false;
    }

    @Override
    public Map<String, String> getMessageParameters() {
        return Map.of();
    }
}
