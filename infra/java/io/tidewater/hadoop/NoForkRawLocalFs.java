package io.tidewater.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.local.LocalConfigKeys;

/**
 * Hadoop's {@code RawLocalFs} (an {@code AbstractFileSystem} over the local {@code FileSystem}) over
 * {@link NoForkRawLocalFileSystem}. {@code RawLocalFs} itself cannot be reused: it builds its own
 * {@code RawLocalFileSystem} and answers {@code getFileLinkStatus} with a {@code readlink} process.
 * Here that call goes to the file system, which starts none for a path that is not a link.
 */
public class NoForkRawLocalFs extends DelegateToFileSystem {
  public NoForkRawLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(uri, new NoForkRawLocalFileSystem(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
  }

  @Override
  public int getUriDefaultPort() {
    return -1;  // file:/// has no port
  }

  @Override
  @Deprecated
  public FsServerDefaults getServerDefaults() throws IOException {
    return LocalConfigKeys.getServerDefaults();
  }

  @Override
  public FsServerDefaults getServerDefaults(Path f) throws IOException {
    return LocalConfigKeys.getServerDefaults();
  }

  @Override
  public boolean isValidName(String src) {
    return true;  // as RawLocalFs: the operating system validates local names
  }
}
