"""The data files a user may edit and how they are read: thresholds, platforms, repair catalogs, Xid/SXid catalogs."""
