# cmake --install's step for the Python package (python/CMakeLists.txt sets GGUFKIT_PY,
# GGUFKIT_PYTHON_DIR, GGUFKIT_PY_FILES and GGUFKIT_PROGRAM before it). The folder is found
# for the prefix of this install: the interpreter's own site folder when it lies under the
# prefix (Debian's /usr/local/lib/python3.11/dist-packages for /usr/local, a venv's for the
# venv), else lib/pythonX.Y/site-packages, where PYTHONPATH or a .pth file can point.
if(NOT GGUFKIT_PYTHON_DIR)
  execute_process(COMMAND ${GGUFKIT_PY} -c [=[
import os, sys, sysconfig
prefix = os.path.realpath(sys.argv[1])
own = os.path.realpath(sysconfig.get_path('platlib'))
print(os.path.relpath(own, prefix) if own.startswith(prefix + os.sep)
      else sysconfig.get_path('platlib', 'posix_prefix', vars={'base': '/@', 'platbase': '/@'})[3:])
]=] ${CMAKE_INSTALL_PREFIX} OUTPUT_VARIABLE GGUFKIT_PYTHON_DIR OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT GGUFKIT_PYTHON_DIR)
    message(FATAL_ERROR "ggufkit: ${GGUFKIT_PY} did not say where its site-packages are; give -DGGUFKIT_PYTHON_DIR=lib/python3/site-packages")
  endif()
endif()
set(dest "${CMAKE_INSTALL_PREFIX}/${GGUFKIT_PYTHON_DIR}/ggufkit")
file(INSTALL ${GGUFKIT_PY_FILES} DESTINATION "${dest}")
file(INSTALL ${GGUFKIT_PROGRAM} DESTINATION "${dest}/bin" USE_SOURCE_PERMISSIONS)
