# OPENIB_CHECK_VERBS: libibverbs and librdmacm are required; XRC is optional.
# Results go to OPENIB_HAVE_XRC (substituted into openib_config.h).
AC_DEFUN([OPENIB_CHECK_VERBS], [
  AC_CHECK_HEADER([infiniband/verbs.h], [],
    [AC_MSG_ERROR([infiniband/verbs.h not found. On Debian/Ubuntu: apt-get install libibverbs-dev])])
  AC_CHECK_LIB([ibverbs], [ibv_get_device_list], [OPENIB_VERBS_LIBS="-libverbs"],
    [AC_MSG_ERROR([libibverbs not found. On Debian/Ubuntu: apt-get install libibverbs-dev])])
  AC_CHECK_HEADER([rdma/rdma_cma.h], [],
    [AC_MSG_ERROR([rdma/rdma_cma.h not found. On Debian/Ubuntu: apt-get install librdmacm-dev])])
  AC_CHECK_LIB([rdmacm], [rdma_create_event_channel], [OPENIB_VERBS_LIBS="$OPENIB_VERBS_LIBS -lrdmacm"],
    [AC_MSG_ERROR([librdmacm not found. On Debian/Ubuntu: apt-get install librdmacm-dev])])
  AC_SUBST([OPENIB_VERBS_LIBS])

  # XRC: ibv_open_xrcd is a static inline in verbs.h, so test by compiling.
  AC_MSG_CHECKING([for XRC verbs (ibv_open_xrcd)])
  openib_save_LIBS="$LIBS"
  LIBS="$LIBS -libverbs"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <infiniband/verbs.h>]],
      [[struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS };
        struct ibv_xrcd *x = ibv_open_xrcd((struct ibv_context *)0, &a);
        struct ibv_srq_init_attr_ex s = { .srq_type = IBV_SRQT_XRC };
        return x == 0 && s.srq_type == IBV_SRQT_XRC && IBV_QPT_XRC_SEND != IBV_QPT_XRC_RECV;]])],
    [openib_have_xrc=yes; OPENIB_HAVE_XRC=1], [openib_have_xrc=no; OPENIB_HAVE_XRC=0])
  LIBS="$openib_save_LIBS"
  AC_MSG_RESULT([$openib_have_xrc])
  AC_SUBST([OPENIB_HAVE_XRC])
])

# OPENIB_CHECK_SUPPORT_LIBS: hwloc and PMIx. We use Open MPI's copies through
# libopen-pal at run time; these checks record whether their headers exist.
AC_DEFUN([OPENIB_CHECK_SUPPORT_LIBS], [
  AC_CHECK_HEADER([hwloc.h], [openib_have_hwloc=yes; OPENIB_HAVE_HWLOC=1],
    [openib_have_hwloc=no; OPENIB_HAVE_HWLOC=0])
  # Debian keeps pmix.h in a private include dir that pkg-config knows.
  openib_save_CPPFLAGS="$CPPFLAGS"
  AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists pmix 2>/dev/null],
    [CPPFLAGS="$CPPFLAGS `$PKG_CONFIG --cflags pmix`"])
  AC_CHECK_HEADER([pmix.h], [openib_have_pmix=yes; OPENIB_HAVE_PMIX=1],
    [openib_have_pmix=no; OPENIB_HAVE_PMIX=0])
  CPPFLAGS="$openib_save_CPPFLAGS"
  AC_SUBST([OPENIB_HAVE_HWLOC])
  AC_SUBST([OPENIB_HAVE_PMIX])
  # Expanded data dir for help texts (make-time variables are not usable in a
  # generated header).
  openib_helpdir_expanded=`test "x$prefix" = xNONE && prefix=$ac_default_prefix; eval echo "$datadir/openib-ng"`
  openib_helpdir_expanded=`test "x$prefix" = xNONE && prefix=$ac_default_prefix; eval echo "$openib_helpdir_expanded"`
  AC_SUBST([openib_helpdir_expanded])
])
