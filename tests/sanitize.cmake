# tests/sanitize.cmake -- the sanitizer suite (issue 13), for a build configured
# with -DBSPK_SANITIZE=address,undefined or -DBSPK_SANITIZE=thread (see the
# top-level CMakeLists.txt and .ci/sanitize.sh): `ctest -L sanitize` runs
#   address,undefined: every unit-test binary whole, the multi-process
#     suite at p = 4 on shm and p = 3 on tcp (every process of every job --
#     bspkrun, the scenarios -- is instrumented too), the BSPlib layer's
#     randomized test at p = 3 on shm, and the collectives' test (quick) on
#     shm and tcp;
#   thread: the job hub, its watchdog threads and the launcher's tests.
# A report fails its test: ASan and UBSan (-fno-sanitize-recover) end the
# process with a non-zero status, LeakSanitizer at exit too, TSan through
# TSAN_OPTIONS=halt_on_error=1; a failed process fails its job, and the job's
# test. Each runs the gtest binary directly (one ctest test per binary or
# slice), so the ordinary labels (unit, multiproc) stay as they are.
set(_san_env
  "ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0")
if(BSPK_SANITIZE MATCHES "thread")
  add_test(NAME sanitize_hub_and_watchdog COMMAND test_boot --gtest_filter=Hub.*:Auth.*:Slurm.*)
  add_test(NAME sanitize_engine COMMAND test_engine)
  set(_san_tests sanitize_hub_and_watchdog sanitize_engine)
else()
  set(_san_tests "")
  foreach(_bin test_units test_boot test_providers test_config test_engine test_local)
    add_test(NAME sanitize_${_bin} COMMAND ${_bin})
    list(APPEND _san_tests sanitize_${_bin})
  endforeach()
  # (Not the rows that crash a process on purpose to see the launcher name
  # the signal: under ASan and UBSan the sanitizer reports the crash and
  # ends the process with status 1, which is its job.)
  add_test(NAME sanitize_multiproc_shm_p4 COMMAND test_multiproc --gtest_filter=*/shm_p4:-*IsReportedAsItsSignal*)
  add_test(NAME sanitize_multiproc_tcp_p3 COMMAND test_multiproc --gtest_filter=*/tcp_p3:-*IsReportedAsItsSignal*)
  list(APPEND _san_tests sanitize_multiproc_shm_p4 sanitize_multiproc_tcp_p3)
  # The BSPlib layer: randomized supersteps checked against a replay
  # (tests/bsplib/bsplib_random.c) with 4 KiB frames, so records meet frame
  # ends: puts, gets and messages; runs of messages; combined gets.
  foreach(_mode gets runs getruns)
    add_test(NAME sanitize_bsplib_random_${_mode}_shm_p3
             COMMAND ${CMAKE_COMMAND} -E env BSPK_FRAME_SIZE=4096 $<TARGET_FILE:bspkrun> -n 3 --provider shm
                     $<TARGET_FILE:bsplib_random> 5 8 24 ${_mode})
    list(APPEND _san_tests sanitize_bsplib_random_${_mode}_shm_p3)
  endforeach()
  # The collectives (tests/coll/coll_test.c, quick): the board's header
  # superstep (shm), the direct one and the rounds (tcp, counts by messages),
  # and the long algorithms after the rounds.
  foreach(_run "shm_p3;shm;3;" "tcp_direct_p3;tcp;3;BSPK_COUNT_EXCHANGE=messages BSPK_COLL_HEADER=direct"
               "tcp_rounds_p4;tcp;4;BSPK_COUNT_EXCHANGE=messages"
               "tcp_rounds_long_p5;tcp;5;BSPK_COUNT_EXCHANGE=messages BSPK_COLL_SHORT=0")
    list(GET _run 0 _tag)
    list(GET _run 1 _prov)
    list(GET _run 2 _np)
    list(GET _run 3 _extra)
    separate_arguments(_extra)
    add_test(NAME sanitize_coll_${_tag}
             COMMAND ${CMAKE_COMMAND} -E env ${_extra} $<TARGET_FILE:bspkrun> -n ${_np} --provider ${_prov}
                     $<TARGET_FILE:coll_test> --mode quick)
    list(APPEND _san_tests sanitize_coll_${_tag})
  endforeach()
endif()
set_tests_properties(${_san_tests} PROPERTIES LABELS sanitize TIMEOUT 1800 ENVIRONMENT "${_san_env}")
# tcp is libfabric's net provider, which leaks inside libfabric
# (tests/lsan_libfabric.supp says what and why).
if(NOT BSPK_SANITIZE MATCHES "thread")
  set_tests_properties(sanitize_multiproc_tcp_p3 sanitize_coll_tcp_direct_p3 sanitize_coll_tcp_rounds_p4
                       sanitize_coll_tcp_rounds_long_p5 PROPERTIES ENVIRONMENT
    "${_san_env};LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan_libfabric.supp:print_suppressions=0")
endif()
