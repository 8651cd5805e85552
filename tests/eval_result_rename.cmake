# A renamed field of the protocol's types is a compile error in its consumers (issue 17, "decode
# once"): copies HEADER (default core/eval_result.h) into a scratch include folder with FIELD
# (default `medianNs`, the field of SampleStats and the accessors that read it, as a real rename
# would leave the header) renamed, and compiles CONSUMERS (a ;-list of sources) with their real
# flags (the build's compile_commands.json) and that folder first on the include path,
# -fsyntax-only. The unmodified copy must compile; the renamed one must fail, naming the field.
#
#   cmake -DSOURCE_DIR=... -DBUILD_DIR=... -DSCRATCH=... [-DHEADER=core/eval_request.h
#         -DFIELD=screenSpeedup "-DCONSUMERS=core/engine_loop.cpp;backends/worker/evaluator.cpp"]
#         -P eval_result_rename.cmake
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED HEADER)
    set(HEADER core/eval_result.h)
endif()
if(DEFINED CONSUMERS)
    set(consumers ${CONSUMERS})
else()
    set(consumers core/engine_loop.cpp views/timing_plot.cpp)
endif()
if(DEFINED FIELD)
    set(field ${FIELD})
else()
    set(field medianNs)
endif()

file(READ "${BUILD_DIR}/compile_commands.json" db)
string(JSON count LENGTH "${db}")
math(EXPR last "${count} - 1")

# The compile command of `file`, as a list, without its output, input and dependency-file
# arguments; the scratch folder goes first on the include path.
function(command_of file include_dir out)
    foreach(i RANGE ${last})
        string(JSON f GET "${db}" ${i} file)
        if(f STREQUAL "${SOURCE_DIR}/${file}")
            string(JSON cmd GET "${db}" ${i} command)
            separate_arguments(args UNIX_COMMAND "${cmd}")
            list(POP_FRONT args compiler)
            set(kept "${compiler}" "-I${include_dir}")
            set(skip FALSE)
            foreach(a IN LISTS args)
                if(skip)
                    set(skip FALSE)
                elseif(a STREQUAL "-o" OR a STREQUAL "-c" OR a STREQUAL "-MF" OR a STREQUAL "-MT" OR a STREQUAL "-MQ")
                    set(skip TRUE)
                elseif(NOT a STREQUAL "-MD" AND NOT a STREQUAL "-MMD")
                    list(APPEND kept "${a}")
                endif()
            endforeach()
            list(APPEND kept -fsyntax-only "${SOURCE_DIR}/${file}")
            set(${out} "${kept}" PARENT_SCOPE)
            return()
        endif()
    endforeach()
    message(FATAL_ERROR "${file} is not in ${BUILD_DIR}/compile_commands.json: build first (CMAKE_EXPORT_COMPILE_COMMANDS)")
endfunction()

file(READ "${SOURCE_DIR}/${HEADER}" header)
string(REGEX MATCHALL "[^A-Za-z0-9_]${field}[^A-Za-z0-9_]" uses "${header}")
list(LENGTH uses n)
if(n LESS 2)
    message(FATAL_ERROR "${HEADER} no longer has the field ${field}: pick another one for this test")
endif()
string(REGEX REPLACE "([^A-Za-z0-9_])${field}([^A-Za-z0-9_])" "\\1${field}Renamed\\2" renamed "${header}")

file(REMOVE_RECURSE "${SCRATCH}")
file(WRITE "${SCRATCH}/same/${HEADER}" "${header}")
file(WRITE "${SCRATCH}/renamed/${HEADER}" "${renamed}")

foreach(consumer IN LISTS consumers)
    command_of(${consumer} "${SCRATCH}/same" same)
    execute_process(COMMAND ${same} WORKING_DIRECTORY "${BUILD_DIR}" RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${consumer} does not compile with an unchanged copy of the header:\n${err}")
    endif()

    command_of(${consumer} "${SCRATCH}/renamed" changed)
    execute_process(COMMAND ${changed} WORKING_DIRECTORY "${BUILD_DIR}" RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE err)
    if(rc EQUAL 0)
        message(FATAL_ERROR "${consumer} still compiles with ${HEADER}'s ${field} renamed: it does not read the typed field")
    endif()
    string(REGEX MATCH "[^\n]*error:[^\n]*${field}[^\n]*" first "${err}")
    if(NOT first)
        message(FATAL_ERROR "${consumer} failed to compile with ${field} renamed, but not over ${field}:\n${err}")
    endif()
    message(STATUS "${consumer}: ${first}")
endforeach()
