package io.tidewater.spark.authz;

import java.util.Set;

/** The statement kinds a role can be granted ({@code statements} in the rules file), by plan class. */
public enum StatementKind {
    QUERY, SHOW, DESCRIBE, EXPLAIN, USE, SET;

    private static final Set<String> SHOW_CLASSES = Set.of("ShowTablesCommand", "ShowTables", "ShowTablesExtended",
            "ShowNamespacesCommand", "ShowNamespaces", "ShowColumnsCommand", "ShowColumns", "ShowTablePropertiesCommand",
            "ShowTableProperties", "ShowPartitionsCommand", "ShowPartitions", "ShowFunctionsCommand", "ShowFunctions",
            "ShowViewsCommand", "ShowViews", "ShowCreateTableCommand", "ShowCreateTable", "ShowCreateTableAsSerdeCommand",
            "ShowCatalogsCommand", "ShowCatalogs", "ShowCurrentNamespaceCommand", "ShowCurrentNamespace",
            "ShowTablePartition");
    private static final Set<String> DESCRIBE_CLASSES = Set.of("DescribeTableCommand", "DescribeRelation",
            "DescribeRelationJsonCommand", "DescribeColumnCommand", "DescribeColumn", "DescribeDatabaseCommand",
            "DescribeNamespace", "DescribeFunctionCommand", "DescribeFunction", "DescribeQueryCommand",
            "DescribeDeltaDetailCommand", "DescribeDeltaHistory", "DescribeDeltaHistoryCommand");
    private static final Set<String> USE_CLASSES = Set.of("SetCatalogAndNamespace", "SetNamespaceCommand", "SetCatalogCommand");
    private static final Set<String> SET_CLASSES = Set.of("SetCommand", "ResetCommand");

    /** The kind of a command's plan class (simple name); null: none of these (DDL, DML, maintenance, ...). */
    static StatementKind ofCommand(String simpleName) {
        if (SHOW_CLASSES.contains(simpleName)) {
            return SHOW;
        }
        if (DESCRIBE_CLASSES.contains(simpleName)) {
            return DESCRIBE;
        }
        if (USE_CLASSES.contains(simpleName)) {
            return USE;
        }
        if (SET_CLASSES.contains(simpleName)) {
            return SET;
        }
        return "ExplainCommand".equals(simpleName) ? EXPLAIN : null;
    }

    /** A command class as a privilege name: {@code DropTableCommand} -> {@code DROP TABLE}. */
    static String privilegeOf(String simpleName) {
        String name = simpleName.replaceAll("(Command|Exec|Statement)$", "");
        return name.replaceAll("([a-z0-9])([A-Z])", "$1 $2").toUpperCase(java.util.Locale.ROOT);
    }
}
