# OPENIB_CHECK_NETTLE: the HMAC that authenticates connection handshakes
# (connect/cpc_auth.c) comes from Nettle, which every Debian system already
# has (apt -> libgnutls30 -> libnettle8). Not optional: without it a stranger
# on the network could hijack a connection.
AC_DEFUN([OPENIB_CHECK_NETTLE], [
  AC_CHECK_HEADER([nettle/hmac.h], [],
    [AC_MSG_ERROR([nettle/hmac.h not found: install nettle-dev (Debian) for the handshake HMAC])])
  openib_save_LIBS="$LIBS"
  AC_SEARCH_LIBS([nettle_hmac_sha256_set_key], [nettle], [],
    [AC_MSG_ERROR([libnettle not found: install nettle-dev (Debian) for the handshake HMAC])])
  LIBS="$openib_save_LIBS"
  OPENIB_NETTLE_LIBS="-lnettle"
  AC_SUBST([OPENIB_NETTLE_LIBS])
])
