package io.tidewater.spark.authz;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The Thrift server's access rules: one JSON file in the spirit of Trino's file-based access control
 * ({@code infra/thrift_access.json}). {@code users} maps each login to a role; each role either has
 * {@code "all": true} (every statement) or lists the statement kinds it may run ({@code statements}),
 * its table privileges ({@code tables}: catalog, schema and table regular expressions, matched whole
 * and case-insensitively, with {@code privileges}) and the session settings it may change
 * ({@code session_properties}). Anything not granted is refused.
 */
public final class AccessRules {
    /** A role's grants; {@link #NONE} grants nothing. */
    public record Role(String name, boolean all, Set<String> statements, List<TableRule> tables, Set<String> sessionProperties) {
        static Role none(String name) {
            return new Role(name, false, Set.of(), List.of(), Set.of());
        }

        boolean mayRun(String statement) {
            return all || statements.contains(statement);
        }

        /** Whether the role holds {@code privilege} on catalog.schema.table; privilege null: any. */
        boolean holds(String privilege, String catalog, String schema, String table) {
            if (all) {
                return true;
            }
            for (TableRule rule : tables) {
                if (rule.matches(catalog, schema, table) && (privilege == null || rule.privileges().contains(privilege))) {
                    return true;
                }
            }
            return false;
        }

        boolean maySet(String key) {
            return all || sessionProperties.contains(key.toLowerCase(Locale.ROOT));
        }
    }

    /** One {@code tables} entry. */
    public record TableRule(Pattern catalog, Pattern schema, Pattern table, Set<String> privileges) {
        boolean matches(String c, String s, String t) {
            return catalog.matcher(c).matches() && schema.matcher(s).matches() && table.matcher(t).matches();
        }
    }

    private final Map<String, String> users;
    private final Map<String, Role> roles;
    private final String source;

    private AccessRules(Map<String, String> users, Map<String, Role> roles, String source) {
        this.users = users;
        this.roles = roles;
        this.source = source;
    }

    public String source() {
        return source;
    }

    /** The role of an authenticated user; a role that grants nothing for an unknown one. */
    public Role roleOf(String user) {
        String role = users.get(user);
        return role == null ? Role.none("(user " + user + " has no role)") : roles.get(role);
    }

    public static AccessRules load(Path file) throws IOException {
        JsonNode root = new ObjectMapper().readTree(file.toFile());
        Map<String, Role> roles = new HashMap<>();
        root.path("roles").fields().forEachRemaining(e -> roles.put(e.getKey(), role(e.getKey(), e.getValue())));
        Map<String, String> users = new HashMap<>();
        root.path("users").fields().forEachRemaining(e -> {
            if (!roles.containsKey(e.getValue().asText())) {
                throw new IllegalArgumentException(file + ": user " + e.getKey() + " has the unknown role " + e.getValue());
            }
            users.put(e.getKey(), e.getValue().asText());
        });
        return new AccessRules(users, roles, file.toString());
    }

    private static Role role(String name, JsonNode node) {
        List<TableRule> tables = new ArrayList<>();
        for (JsonNode t : node.path("tables")) {
            tables.add(new TableRule(pattern(t, "catalog"), pattern(t, "schema"), pattern(t, "table"), upper(t.path("privileges"))));
        }
        Set<String> properties = new TreeSet<>();
        node.path("session_properties").forEach(p -> properties.add(p.asText().toLowerCase(Locale.ROOT)));
        return new Role(name, node.path("all").asBoolean(false), upper(node.path("statements")), List.copyOf(tables), properties);
    }

    private static Pattern pattern(JsonNode rule, String field) {
        return Pattern.compile(rule.path(field).asText(".*"), Pattern.CASE_INSENSITIVE);
    }

    private static Set<String> upper(JsonNode list) {
        Set<String> out = new TreeSet<>();
        list.forEach(v -> out.add(v.asText().toUpperCase(Locale.ROOT)));
        return out;
    }
}
