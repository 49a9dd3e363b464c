package io.tidewater.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;

/**
 * {@code fs.AbstractFileSystem.file.impl} (what {@code FileContext} uses: Spark's checkpoint files, Delta's
 * log): Hadoop's {@code LocalFs}, checksummed, over {@link NoForkRawLocalFs}.
 */
public class NoForkLocalFs extends ChecksumFs {
  public NoForkLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new NoForkRawLocalFs(uri, conf));
  }
}
