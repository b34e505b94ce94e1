# bsplib/spawn.cmake -- bspk_spawn: bsplib_spawn_self (bsplib/spawn.h), which
# runs a program started without a launcher as pid 0 of a job of bspkrun
# --adopt. Linked into the BSPlib layer; include()d from bsplib/CMakeLists.txt.
add_library(bspk_spawn STATIC ${CMAKE_CURRENT_LIST_DIR}/spawn.cpp)
set_target_properties(bspk_spawn PROPERTIES POSITION_INDEPENDENT_CODE ON
                                            CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_include_directories(bspk_spawn PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
# Where bspkrun is when the program runs from the build tree (the installed
# layer finds <prefix>/bin/bspkrun next to its own lib/ first).
target_compile_definitions(bspk_spawn PRIVATE BSPKRUN_BUILD_PATH="$<TARGET_FILE:bspkrun>")
target_link_libraries(bspk_spawn PUBLIC ${CMAKE_DL_LIBS})
add_dependencies(bspk_spawn bspkrun)
