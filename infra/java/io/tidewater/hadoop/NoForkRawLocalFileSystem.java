package io.tidewater.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process start per file.
 *
 * <p>Without Hadoop's native library (pyspark ships none), {@link RawLocalFileSystem} runs {@code chmod}
 * after creating each file or folder and {@code readlink} for each {@code getFileLinkStatus}, which
 * {@code FileContext} calls on every rename: a streaming checkpoint's commit. A speed job at 1,000 events/s
 * started 46 processes per micro-batch this way (measured on 2 cores). Here the same two operations go through
 * {@code java.nio}: the permission bits set are the same, and a path that is not a symbolic link gets the
 * status the parent gives it too. Symbolic links, and modes with the sticky bit, take the parent's path.
 */
public class NoForkRawLocalFileSystem extends RawLocalFileSystem {
  private static final PosixFilePermission[] BITS_HIGH_TO_LOW = {
      PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE,
      PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE};

  /** The nine rwx bits of {@code mode} as java.nio permissions. */
  static Set<PosixFilePermission> posixPermissions(int mode) {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < BITS_HIGH_TO_LOW.length; i++) {
      if ((mode & (1 << (BITS_HIGH_TO_LOW.length - 1 - i))) != 0) {
        set.add(BITS_HIGH_TO_LOW[i]);
      }
    }
    return set;
  }

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    int mode = permission.toShort();
    if ((mode & ~0777) != 0) {  // sticky bit: java.nio cannot set it
      super.setPermission(p, permission);
      return;
    }
    try {
      Files.setPosixFilePermissions(pathToFile(p).toPath(), posixPermissions(mode));
    } catch (NoSuchFileException e) {
      throw new FileNotFoundException("File " + p + " does not exist");
    } catch (UnsupportedOperationException e) {  // a file system without POSIX permissions
      super.setPermission(p, permission);
    }
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    if (!Files.isSymbolicLink(pathToFile(f).toPath())) {
      return getFileStatus(f);  // what the parent returns for a file, a folder, or none (FileNotFoundException)
    }
    return super.getFileLinkStatus(f);
  }
}
