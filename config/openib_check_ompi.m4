# OPENIB_CHECK_OMPI: locate Open MPI 4.1.x devel headers (BTL API 3.1.0).
# Order: --with-ompi=DIR, then `pkg-config ompi`, then `mpicc --showme`.
# Sets OPENIB_OMPI_CPPFLAGS, OPENIB_OMPI_LIBS, OPENIB_OMPI_INCDIR,
# OPENIB_OMPI_LIBDIR and openib_ompi_version.
AC_DEFUN([OPENIB_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR],
      [Open MPI 4.1 installation prefix or include directory (default: pkg-config ompi, then mpicc --showme)])],
    [], [with_ompi=])

  openib_ompi_inc=
  openib_ompi_lib=
  openib_ompi_how=
  AS_IF([test -n "$with_ompi" && test "$with_ompi" != yes && test "$with_ompi" != no], [
    for d in "$with_ompi" "$with_ompi/include" "$with_ompi/lib/openmpi/include" "$with_ompi/include/openmpi/.."; do
      AS_IF([test -z "$openib_ompi_inc" && test -f "$d/openmpi/opal_config.h"], [openib_ompi_inc=`cd "$d" && pwd`])
    done
    for d in "$with_ompi/lib" "$with_ompi/lib64" "$openib_ompi_inc/../lib"; do
      AS_IF([test -z "$openib_ompi_lib" && ls "$d"/libopen-pal.* >/dev/null 2>&1], [openib_ompi_lib=`cd "$d" && pwd`])
    done
    openib_ompi_how="--with-ompi=$with_ompi"
    AS_IF([test -z "$openib_ompi_inc"],
      [AC_MSG_ERROR([--with-ompi=$with_ompi: no openmpi/opal_config.h found under it. Point it at an Open MPI 4.1 prefix with its devel headers.])])
  ])

  AS_IF([test -z "$openib_ompi_inc"], [
    PKG_PROG_PKG_CONFIG
    AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists ompi 2>/dev/null], [
      openib_ompi_inc=`$PKG_CONFIG --variable=includedir ompi`
      openib_ompi_lib=`$PKG_CONFIG --variable=libdir ompi`
      openib_ompi_how="pkg-config ompi"
    ])
  ])

  AS_IF([test -z "$openib_ompi_inc" || test ! -f "$openib_ompi_inc/openmpi/opal_config.h"], [
    AC_PATH_PROG([OPENIB_MPICC], [mpicc])
    AS_IF([test -n "$OPENIB_MPICC"], [
      for d in `$OPENIB_MPICC --showme:incdirs 2>/dev/null`; do
        AS_IF([test -f "$d/openmpi/opal_config.h"], [openib_ompi_inc="$d"])
      done
      for d in `$OPENIB_MPICC --showme:libdirs 2>/dev/null`; do
        AS_IF([ls "$d"/libopen-pal.* >/dev/null 2>&1], [openib_ompi_lib="$d"])
      done
      openib_ompi_how="mpicc --showme"
    ])
  ])

  AC_MSG_CHECKING([for Open MPI devel headers])
  AS_IF([test -z "$openib_ompi_inc" || test ! -f "$openib_ompi_inc/openmpi/opal_config.h" || test ! -f "$openib_ompi_inc/openmpi/opal/mca/btl/btl.h"], [
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([Open MPI's devel headers (openmpi/opal_config.h, opal/mca/btl/btl.h) were not found.
    On Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin
    Elsewhere: ./configure --with-ompi=/path/to/openmpi-4.1-prefix])
  ])
  AC_MSG_RESULT([$openib_ompi_inc (via $openib_ompi_how)])

  OPENIB_OMPI_INCDIR="$openib_ompi_inc"
  OPENIB_OMPI_CPPFLAGS="-I$openib_ompi_inc -I$openib_ompi_inc/openmpi"
  openib_save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $OPENIB_OMPI_CPPFLAGS"

  AC_MSG_CHECKING([Open MPI version])
  AC_COMPUTE_INT([openib_ompi_major], [OPAL_MAJOR_VERSION], [#include "opal_config.h"], [openib_ompi_major=0])
  AC_COMPUTE_INT([openib_ompi_minor], [OPAL_MINOR_VERSION], [#include "opal_config.h"], [openib_ompi_minor=0])
  AC_COMPUTE_INT([openib_ompi_release], [OPAL_RELEASE_VERSION], [#include "opal_config.h"], [openib_ompi_release=0])
  openib_ompi_version="$openib_ompi_major.$openib_ompi_minor.$openib_ompi_release"
  AC_MSG_RESULT([$openib_ompi_version])
  AS_IF([test "$openib_ompi_major.$openib_ompi_minor" != "4.1"],
    [AC_MSG_ERROR([Open MPI $openib_ompi_version found in $openib_ompi_inc; openib-ng needs Open MPI 4.1.x (BTL API 3.1.0).])])

  AC_MSG_CHECKING([BTL API version])
  AC_COMPUTE_INT([openib_btl_api], [BTL_VERSION],
    [#include "opal_config.h"
     #include "opal/mca/btl/btl.h"], [openib_btl_api=0])
  AC_MSG_RESULT([$openib_btl_api])
  AS_IF([test "$openib_btl_api" != 310],
    [AC_MSG_ERROR([BTL API $openib_btl_api in $openib_ompi_inc; openib-ng needs BTL API 3.1.0 (BTL_VERSION 310).])])
  CPPFLAGS="$openib_save_CPPFLAGS"

  AS_IF([test -z "$openib_ompi_lib"], [openib_ompi_lib=`cd "$openib_ompi_inc/../lib" 2>/dev/null && pwd`])
  openib_save_LDFLAGS="$LDFLAGS"
  LDFLAGS="$LDFLAGS -L$openib_ompi_lib"
  AC_CHECK_LIB([open-pal], [opal_show_help_add_dir], [],
    [AC_MSG_ERROR([libopen-pal (Open MPI 4.1) not found in '$openib_ompi_lib'.])])
  LDFLAGS="$openib_save_LDFLAGS"
  OPENIB_OMPI_LIBDIR="$openib_ompi_lib"
  # Open MPI's own component directory (kept after ours in the search path).
  OPENIB_OMPI_COMPONENTDIR=
  for d in "$openib_ompi_lib/openmpi3" "$openib_ompi_lib/openmpi" "$openib_ompi_lib/../lib/openmpi"; do
    AS_IF([test -z "$OPENIB_OMPI_COMPONENTDIR" && ls "$d"/mca_btl_self.* >/dev/null 2>&1],
      [OPENIB_OMPI_COMPONENTDIR=`cd "$d" && pwd`])
  done
  AC_MSG_CHECKING([for Open MPI's component directory])
  AC_MSG_RESULT([${OPENIB_OMPI_COMPONENTDIR:-not found}])
  AC_SUBST([OPENIB_OMPI_COMPONENTDIR])
  OPENIB_OMPI_LIBS="-L$openib_ompi_lib -lopen-pal"

  # Open MPI's common verbs library (libmca_common_verbs, shipped with Open
  # MPI's verbs components): its fork test is used for
  # btl_openib_want_fork_support when it links; else ibv_fork_init directly.
  OPENIB_HAVE_COMMON_VERBS=0
  OPENIB_COMMON_VERBS_LIBS=
  AS_IF([test -f "$openib_ompi_inc/openmpi/opal/mca/common/verbs/common_verbs.h"], [
    openib_save_LDFLAGS="$LDFLAGS"
    LDFLAGS="$LDFLAGS -L$openib_ompi_lib"
    AC_CHECK_LIB([mca_common_verbs], [opal_common_verbs_fork_test],
      [OPENIB_HAVE_COMMON_VERBS=1; OPENIB_COMMON_VERBS_LIBS="-L$openib_ompi_lib -lmca_common_verbs"],
      [], [-lopen-pal -libverbs])
    LDFLAGS="$openib_save_LDFLAGS"
  ])
  AC_SUBST([OPENIB_HAVE_COMMON_VERBS])
  AC_SUBST([OPENIB_COMMON_VERBS_LIBS])

  # Open MPI's event layer (opal_event_*, opal_progress_thread_init) runs
  # the oob side channel. Debian's Open MPI is built against the system's
  # libevent ("external" component): its opal_event_* are macros over
  # libevent's own calls, so we link libevent_core as libopen-pal does. A
  # build with the bundled libevent has them inside libopen-pal.
  OPENIB_EVENT_LIBS=
  AS_IF([test -f "$openib_ompi_inc/openmpi/opal/mca/event/external/external.h"], [
    AC_CHECK_HEADER([event2/event.h], [],
      [AC_MSG_ERROR([Open MPI in $openib_ompi_inc uses the system's libevent, but its headers (event2/event.h) are missing.
    On Debian/Ubuntu: apt-get install libevent-dev])])
    AC_CHECK_LIB([event_core], [event_assign], [OPENIB_EVENT_LIBS="-levent_core"],
      [AC_MSG_ERROR([Open MPI in $openib_ompi_inc uses the system's libevent, but libevent_core does not link.
    On Debian/Ubuntu: apt-get install libevent-dev])])
  ])
  AC_SUBST([OPENIB_EVENT_LIBS])

  AC_SUBST([OPENIB_OMPI_INCDIR])
  AC_SUBST([OPENIB_OMPI_LIBDIR])
  AC_SUBST([OPENIB_OMPI_CPPFLAGS])
  AC_SUBST([OPENIB_OMPI_LIBS])
  AC_SUBST([openib_ompi_version])
])
