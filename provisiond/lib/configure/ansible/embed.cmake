# Turns provisiond.py (the stdout callback for ansible-playbook) into a C++
# string: ansible_callback_data.cc.
file(READ ${SRC} py)
file(WRITE ${OUT}.tmp "// Generated from provisiond/lib/configure/ansible/provisiond.py by embed.cmake. Do not edit.\nnamespace prov {\nextern const char kAnsibleCallbackPlugin[];\nconst char kAnsibleCallbackPlugin[] = R\"pycb(${py})pycb\";\n}  // namespace prov\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
