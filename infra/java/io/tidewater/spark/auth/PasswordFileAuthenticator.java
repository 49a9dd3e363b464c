package io.tidewater.spark.auth;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.security.sasl.AuthenticationException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HiveServer2's {@code CUSTOM} password check ({@code hive.server2.custom.authentication.class}):
 * each user's salted PBKDF2 hash from the credentials file that {@code infra/services/thrift_access.py}
 * writes (0600). No password is stored on the server's side. A verified login is remembered (as a
 * SHA-256 of salt and password, in memory) until the file changes, so a client's next connections do
 * not pay the key derivation again.
 *
 * <p>The file's path is set once by {@link ThriftSecurity#install} before the server starts; it is
 * never read from a setting a client could change. HiveServer2 creates a new instance per login.
 */
public final class PasswordFileAuthenticator implements PasswdAuthenticationProvider {
    private static final Logger LOG = LoggerFactory.getLogger(PasswordFileAuthenticator.class);
    private static volatile Path file;
    private static volatile Credentials loaded;

    /** One file version: user -> hash entry, the hint naming where the passwords are, verified logins. */
    private record Credentials(long modified, Map<String, JsonNode> users, String hint, Map<String, byte[]> verified) {
    }

    static synchronized void configure(Path credentials) {
        if (file != null && !file.equals(credentials)) {
            throw new IllegalStateException("tidewater: the credentials file is set already: " + file);
        }
        file = credentials;
    }

    @Override
    public void Authenticate(String user, String password) throws AuthenticationException {
        Credentials creds;
        try {
            creds = current();
        } catch (IOException | RuntimeException e) {
            LOG.error("tidewater: cannot read the credentials file {}", file, e);
            throw new AuthenticationException("tidewater: the server cannot read its credentials file " + file);
        }
        JsonNode entry = creds.users().get(user);
        if (entry == null || password == null || !verify(creds, user, entry, password)) {
            String why = entry == null ? "unknown user '" + user + "'" : "wrong password for user '" + user + "'";
            LOG.warn("tidewater: login refused: {}; {}", why, creds.hint());
            throw new AuthenticationException("tidewater: login refused: " + why + "; " + creds.hint());
        }
    }

    private static boolean verify(Credentials creds, String user, JsonNode entry, String password) throws AuthenticationException {
        byte[] salt = Base64.getDecoder().decode(entry.path("salt").asText());
        byte[] quick = sha256(salt, password);
        byte[] known = creds.verified().get(user);
        if (known != null) {
            return MessageDigest.isEqual(known, quick);
        }
        byte[] expected = Base64.getDecoder().decode(entry.path("hash").asText());
        try {
            PBEKeySpec spec = new PBEKeySpec(password.toCharArray(), salt, entry.path("iterations").asInt(), expected.length * 8);
            byte[] derived = SecretKeyFactory.getInstance(entry.path("algorithm").asText()).generateSecret(spec).getEncoded();
            spec.clearPassword();
            if (!MessageDigest.isEqual(expected, derived)) {
                return false;
            }
        } catch (GeneralSecurityException e) {
            throw new AuthenticationException("tidewater: cannot check the password of '" + user + "': " + e);
        }
        creds.verified().put(user, quick);
        return true;
    }

    private static byte[] sha256(byte[] salt, String password) throws AuthenticationException {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(salt);
            return digest.digest(password.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new AuthenticationException("tidewater: no SHA-256: " + e);
        }
    }

    private static synchronized Credentials current() throws IOException {
        Path path = file;
        if (path == null) {
            throw new IOException("tidewater: no credentials file configured");
        }
        long modified = Files.getLastModifiedTime(path).toMillis();
        Credentials c = loaded;
        if (c != null && c.modified() == modified) {
            return c;
        }
        JsonNode root = new ObjectMapper().readTree(path.toFile());
        Map<String, JsonNode> users = new HashMap<>();
        root.path("users").fields().forEachRemaining(e -> users.put(e.getKey(), e.getValue()));
        loaded = new Credentials(modified, Map.copyOf(users), root.path("hint").asText(), new ConcurrentHashMap<>());
        return loaded;
    }
}
